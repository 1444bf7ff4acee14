"""Test helpers shared by unit and integration tests (local servers, fixtures' building blocks)."""
