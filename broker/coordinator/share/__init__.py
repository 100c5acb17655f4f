"""KIP-932 share groups: members and assignments, share-partition record states, share
sessions. Kept in memory (the share-partition state is not persisted across restarts)."""
