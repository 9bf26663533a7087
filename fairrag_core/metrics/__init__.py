"""Metrics: pure functions on arrays, each with its formula and the paper it comes from.

* :mod:`.exposure` — expected exposure ε, the oracle target ε*, EE-D and EE-R with bootstrap intervals
  (Kim & Diaz 2025, §3.3.1, App. C; Diaz et al. 2020);
* :mod:`.attribution` — EAR and EAE-D: how many retrieved documents the answer rests on, and how fairly the
  cited documents are exposed (Kim & Diaz 2025, §3.3.3–3.3.4, Eq. 8–11);
* :mod:`.utility` — answer utility against the gold answer: ROUGE, token F1, exact match, MAE (§3.3.2);
* :mod:`.group_fairness` — AWRF, nDCG, KL and JS divergences of group distributions (TREC Fair 2022;
  Chen & Fang's FAIR-QR); :mod:`.group_targets` — a collection's groups and target distributions.
"""

from .utility import UtilityMetric, exact_match, mae_utility, rouge, token_f1, utility

__all__ = ["UtilityMetric", "exact_match", "mae_utility", "rouge", "token_f1", "utility"]
