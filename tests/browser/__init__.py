"""Browser tests (headless Debian Chromium via Playwright); see conftest.py."""
