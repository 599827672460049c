"""A headless Chromium for the replay tests: Debian's ``chromium`` + ``chromium-driver``.

Selenium is pointed at the system browser and driver, so nothing is downloaded. Tests
skip (with the reason) only when the browser is absent; CI installs it (``.ci/run``).
"""

from __future__ import annotations

import os
import shutil

import pytest


def system_chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def chromium_or_skip(width: int = 1400, height: int = 1000):
    """A headless Chrome webdriver that records the console, or a pytest skip."""
    found = system_chromium()
    if found is None:
        pytest.skip("chromium and chromium-driver are not installed (apt-get install them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download
    opts = webdriver.ChromeOptions()
    opts.binary_location = found[0]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"):  # fmt: skip
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(found[1]), options=opts)


def console_errors(driver) -> list[str]:
    """Console messages of level SEVERE (errors) since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
