"""The page a person keeps open on the runner (`plugkit ui`): its guard, data, events and assets."""
