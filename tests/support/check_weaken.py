"""The second test file of the check-weakening tests' repository: its tests are what a weakened check
would drop."""

TWO = "def test_two():\n    assert True\n\n\ndef test_three():\n    assert True\n"
