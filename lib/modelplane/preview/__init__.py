"""``modelplane preview``: simulate a whole fleet offline and summarise it."""
