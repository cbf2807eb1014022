"""Helpers the tests share: gate projects, loopback servers, corpora and suites, records, engines, tiny models."""
