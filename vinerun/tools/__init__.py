"""Command-line tools: ``vinerun devices`` and friends."""
