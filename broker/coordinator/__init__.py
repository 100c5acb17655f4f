"""The coordinators: consumer groups (both protocols) and transactions."""
