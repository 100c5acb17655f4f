from broker.runtime import crc32c_import

__version__ = "0.1.0"

# Before anything below imports crc32c (records, segments, stores): see crc32c_import.
crc32c_import.install()
