"""Device plugins. Each subpackage is one device; the runtime finds them by entry point."""
