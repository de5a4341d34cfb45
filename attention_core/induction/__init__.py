"""Watch attention learn: an induction head forms in a small attention-only decoder, in seconds, on a CPU.

The task (:mod:`.task`): random tokens, then the same tokens again. The model (:mod:`.model`): token and
position embeddings, two attention-only layers, an unembedding. The scores that name a head's job
(:mod:`.scores`). Training as a generator of progress records (:mod:`.training`). The shipped, trained
weights and the command that makes them (:mod:`.shipped`, ``python -m attention_core.induction``).
"""

from .model import InductionConfig, InductionForward, InductionWeights, LayerWeights, forward, half_losses, init_weights
from .scores import copying_score, copying_scores, ov_logits, prefix_matching_score, previous_token_score
from .task import repeated_tokens, seeded_generator, tokens_from_words
from .training import Progress, eval_tokens, head_scores, phase_change_step, train
