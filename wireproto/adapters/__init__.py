"""wireproto subpackage."""
