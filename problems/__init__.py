"""Problems: the datasets t2t_lite trains on. Importing this registers them."""

from t2t_lite.ids import EOS_ID, PAD_ID
from t2t_lite.problems import algorithmic  # noqa: F401  (registers problems)
from t2t_lite.problems import parsing, translate, translate_wmt  # noqa: F401  (registers problems)
from t2t_lite.problems import synthetic  # noqa: F401  (registers problems)
from t2t_lite.problems.base import Problem, ProblemError
from t2t_lite.problems.text2text import Text2TextProblem

__all__ = ["EOS_ID", "PAD_ID", "Problem", "ProblemError", "Text2TextProblem"]
