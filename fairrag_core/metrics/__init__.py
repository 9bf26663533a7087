"""String-utility metrics for generated answers (the μ_u of Kim & Diaz 2025, §3.3.2)."""

from .utility import UtilityMetric, exact_match, mae_utility, rouge, token_f1, utility

__all__ = ["UtilityMetric", "exact_match", "mae_utility", "rouge", "token_f1", "utility"]
