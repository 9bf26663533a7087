"""Text → value converters for command-line options (argparse ``type=``): one parser per kind of value.

Each raises :class:`argparse.ArgumentTypeError` with a message that says what was expected, so argparse prints
``argument --seed: expected a whole number from 0 to …`` and exits with code 2. They live below the CLI because
the settings dataclasses name them in their option declarations (:mod:`fairrag_core.options`).

>>> positive_arg("5"), seed_arg("42"), optional_float("none"), alphas_arg("0,2,inf"), id_list_arg("q1, q2")
(5, 42, None, (0.0, 2.0, inf), ('q1', 'q2'))
"""

from __future__ import annotations

import argparse

from .checks import parse_alpha, parse_alphas, parse_list
from .errors import InvalidParameterError
from .seeds import MAX_SEED, check_seed

__all__ = ["alpha_arg", "alphas_arg", "whole_arg", "positive_arg", "candidates_arg", "count_arg", "seed_arg",
           "optional_float", "unit_arg", "level_arg", "id_list_arg"]


def _argument_type(parse, name: str):
    def convert(text: str):
        try:
            return parse(text)
        except InvalidParameterError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    convert.__name__ = name  # argparse names the type in its messages
    return convert


#: ``--alpha``: a number ≥ 0 or ``inf`` (the deterministic ranker); the app parses α the same way.
alpha_arg = _argument_type(parse_alpha, "alpha")
#: ``--alphas``: a comma-separated α grid.
alphas_arg = _argument_type(parse_alphas, "alphas")
#: ``--queries q1,q2``: a comma-separated list of ids (a tuple; empty text is the empty tuple).
id_list_arg = _argument_type(parse_list, "id_list")


def whole_arg(text: str) -> int:
    """A whole number written in ASCII digits, optionally signed (``int()`` would also take ``1_0`` and ``٣``)."""
    body = text.strip()
    digits = body[1:] if body[:1] in "+-" else body
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 19:
        raise argparse.ArgumentTypeError(f"expected a whole number (digits 0-9, at most 19), got {text!r}")
    return int(body)


def positive_arg(text: str) -> int:
    """A whole number ≥ 1 (k, N, resamples)."""
    try:
        value = whole_arg(text)
    except argparse.ArgumentTypeError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def candidates_arg(text: str) -> int | None:
    """The first-stage cut-off K: a whole number ≥ 1, or ``all`` (also ``none``) for every document."""
    if text.strip().lower() in ("all", "none"):
        return None
    try:
        return positive_arg(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number or 'all', got {text!r}") from None


def count_arg(text: str) -> int:
    """A whole number ≥ 0 (how many to show, folds, …)."""
    try:
        value = whole_arg(text)
    except argparse.ArgumentTypeError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, got {text!r}")
    return value


def seed_arg(text: str) -> int:
    """``--seed``: a whole number from 0 to 2**63 − 1 (:func:`fairrag_core.seeds.check_seed`)."""
    try:
        return check_seed(whole_arg(text))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {MAX_SEED} (e.g. --seed 42), got "
                                         f"{text!r}") from None
    except InvalidParameterError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def optional_float(text: str) -> float | None:
    """A number, or ``none`` for "no such rule"."""
    if text.strip().lower() in ("none", "off", "argmax"):
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'none', got {text!r}") from None


def unit_arg(text: str) -> float:
    """A number from 0 to 1 (a probability: patience, utility)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def level_arg(text: str) -> float:
    """An interval level strictly between 0 and 1 (0.95)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a level between 0 and 1 (not 0 or 1), e.g. 0.95, got {text!r}")
    return value
