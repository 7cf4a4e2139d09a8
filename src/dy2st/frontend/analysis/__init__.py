"""Static analysis of converted functions: reads/writes per block, liveness, possibly-defined names.

The control-flow converters call ``annotate(tree)`` once and read the facts from the nodes
(``anno.get(if_node, anno.LIVE_OUT)``); see ``liveness`` for the exact rules.
"""

from dy2st.frontend.analysis import anno
from dy2st.frontend.analysis.liveness import annotate
from dy2st.frontend.analysis.scopes import Usage, block_usage, node_usage

__all__ = ["Usage", "anno", "annotate", "block_usage", "node_usage"]
