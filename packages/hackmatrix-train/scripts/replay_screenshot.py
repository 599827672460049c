"""Screenshot an ``hm-watch`` HTML replay with the system's headless Chromium (for the README).

Needs Debian's ``chromium`` and ``chromium-driver`` and selenium (the dev group); nothing is
downloaded. Example (the README's picture)::

    uv run hm-watch checkpoints/<run> --episodes 4 --out replay.html
    uv run python packages/hackmatrix-train/scripts/replay_screenshot.py replay.html \
        docs/images/replay.png   # the best-return episode, its middle step
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path


def chromium_driver(width: int, height: int):
    """A headless Chromium webdriver using the system browser and driver (no download)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        sys.exit("needs the chromium and chromium-driver packages (apt-get install -y ...)")
    os.environ.setdefault("SE_OFFLINE", "true")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--window-size={width},{height}", "--force-device-scale-factor=1"):  # fmt: skip
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(driver), options=opts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("html", type=Path)
    p.add_argument("png", type=Path)
    p.add_argument(
        "--episode", type=int, default=-1, help="position in the episode list (-1: best return)"
    )
    p.add_argument("--step", type=int, default=-1, help="frame to show (-1: the middle)")
    p.add_argument("--width", type=int, default=1400)
    p.add_argument("--height", type=int, default=1000)
    args = p.parse_args(argv)
    drv = chromium_driver(args.width, args.height)
    try:
        drv.get(args.html.resolve().as_uri())
        last = drv.execute_script(
            """let i = arguments[0];
               if (i < 0) i = DATA.episodes.reduce((b, e, k, all) =>
                 e.summary.return > all[b].summary.return ? k : b, 0);
               pick(i); return DATA.episodes[ep].frames.length - 1;""",
            args.episode,
        )
        step = last // 2 if args.step < 0 else min(args.step, last)
        drv.execute_script("go(arguments[0]);", step)
        args.png.parent.mkdir(parents=True, exist_ok=True)
        drv.save_screenshot(str(args.png))
    finally:
        drv.quit()
    print(f"wrote {args.png} (step {step} of {last})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
