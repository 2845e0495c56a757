"""Screenshot of the graph explorer page: docs/img/explorer.png.

    .venv/bin/python scripts/explorer_screenshot.py [--out docs/img/explorer.png]

1. Data: the bundled demo conversation (`mem0g demo --scripted`, user_id 'maya') in a temporary
   embedded store. SCRIPTED MODE: the LLM is the scripted TEST DOUBLE server
   (mem0g.testing.ScriptedLLMServer with mem0g/demo/script.json), not a live model.
2. Page: `mem0g dump --format html -u maya`, the same file a user gets.
3. Browser: headless Chromium (/usr/bin/chromium, Debian package `chromium`) opens the file
   with ended edges shown and the entity view of the most connected entity
   (`#ended=1&entity=ID`) and saves a PNG.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "explorer.png")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--size", default="1400,850")
    args = parser.parse_args()
    mem0g = [sys.executable, "-c", "from mem0g.cli import app; app()"]
    with tempfile.TemporaryDirectory() as home:
        store = Path(home) / "store"
        subprocess.run([*mem0g, "demo", "--scripted", "--path", str(store)], check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        page = Path(home) / "maya.html"
        subprocess.run([*mem0g, "--path", str(store), "dump", "--format", "html", "-u", "maya",
                        "-o", str(page)], check=True)  # fmt: skip
        dump = subprocess.run([*mem0g, "--path", str(store), "dump", "-u", "maya"], check=True,
                              capture_output=True, text=True).stdout  # fmt: skip
        relations = json.loads(dump)["relations"]
        degree = Counter(r[k] for r in relations for k in ("source_id", "destination_id"))
        focus = degree.most_common(1)[0][0]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={Path(home) / 'chromium'}", f"--window-size={args.size}",
             "--virtual-time-budget=5000", f"--screenshot={args.out}",
             f"{page.as_uri()}#ended=1&entity={focus}"],
            check=True, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
