"""The app's text needs no emoji font: a classroom PC or projector without one showed ✅ and ⭐ as empty boxes.
Icons are Material icons (``:material/…:``, shipped with Streamlit); ✓ and ✗ are in common text fonts."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# pictographs, dingbats and symbols that text fonts like DejaVu lack, and the emoji variation selector
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u26FF\u2B00-\u2BFF\u2705\u274C\u231B\u23F0-\u23FF\uFE0F]")


def test_no_emoji_in_what_the_app_shows():
    files = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py")),
             *sorted((ROOT / "fairrag_studio").rglob("*.py"))]
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in files
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if EMOJI.search(line)]
    assert not found, "use a :material/…: icon instead:\n" + "\n".join(found)
