"""KIP-932 share groups: members and assignments, share-partition record states, share
sessions. Share-partition states survive restarts (storage.share_state_store); groups and
sessions are kept in memory."""
