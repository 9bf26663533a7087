"""Presenter mode's tour: the README's five tour steps, each laid out on one 1280×720 screen (issue 31, Must have 4).

The Playground draws a step selector in Presenter mode and shows only the chosen step's parts (app_pages/
playground.py); :data:`STEP_CSS` tightens Presenter type where a 1280×720 projector would otherwise scroll, cut or
wrap (the page padding, the metric values, the α knob's labels and the citation chips).
"""

from __future__ import annotations

__all__ = ["STEP_CSS", "TOUR_STEPS", "chip_title"]

#: The README's "15-minute classroom tour", one entry per step: (selector label, what the step is for).
TOUR_STEPS = (
    ("1 · The problem", "Deterministic: the same few documents get all the exposure."),
    ("2 · The knob", "Slide α: exposure spreads over more providers."),
    ("3 · Answers", "Generate: does fairness cost answer quality, and which documents do the answers rest on?"),
    ("4 · The curves", "Disparity curves recommend an α; apply it here."),
    ("5 · Accountability", "The audit, its report, and FAIR-QR: who is over-exposed, and another lever."),
)

#: Presenter mode's step layout (on top of app.py's PRESENTER_CSS): less padding above the page, metric values that
#: leave the tiles one row, labels that stay on one line, citation chips that show their whole label (wrapping
#: between words when a chip is narrower than its title, never cut to "…").
STEP_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding: 3.8rem 1.5rem 1rem 1.5rem; }
[data-testid="stMain"] [data-testid="stButtonGroup"] p { font-size: 1.05rem; }
[data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.55rem; }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * { font-size: 2.1rem !important; line-height: 1.15; }
[data-testid="stMetricLabel"] p { font-size: 1.05rem; white-space: nowrap; }
[data-testid="stMain"] [data-testid="stWidgetLabel"] p { white-space: nowrap; overflow: hidden; }
[data-testid="stMain"] [data-testid="stCheckbox"] p { white-space: nowrap; }
[data-testid="stMain"] [data-testid="stPopover"] button * { white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; text-align: left; }
[data-testid="stMain"] [data-testid="stPopover"] button { height: auto; }
</style>"""


def chip_title(title: str, words: int = 4) -> str:
    """A citation chip's name for a document: the brand/name part of its title (before ":"), at most ``words``
    words, whole words only, ending in "…" when words were left out (the chip's tooltip and popover give the full
    title). Never cut inside a word, so a class can read which document a ✓ credits.

    >>> chip_title("Stridewell Brace 4: Stability Trainer")
    'Stridewell Brace 4'
    >>> chip_title("Moving to Minimalist Footwear Safely: A Clinician's Guide")
    'Moving to Minimalist Footwear…'
    >>> chip_title("Fit, Simply"), chip_title("  Greyfield   Relief Insoles ")
    ('Fit, Simply', 'Greyfield Relief Insoles')
    >>> chip_title("Supercalifragilisticexpialidocious shoes and more", 1)
    'Supercalifragilisticexpialidocious…'
    """
    text = " ".join(str(title).split())
    head = text.split(": ", 1)[0] if ": " in text else text
    kept = head.split()
    if len(kept) <= words:
        return head
    return " ".join(kept[:words]).rstrip(",;:.-–—") + "…"
