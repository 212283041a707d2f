"""Repository-wide test configuration."""
