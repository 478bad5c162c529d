"""Trace recording, comparison, OTel export and foreign-cassette import."""
