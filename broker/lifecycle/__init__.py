"""Starting and stopping one broker, and its background tasks."""
