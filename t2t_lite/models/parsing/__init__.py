"""The parsing models: the aligned Transformer (`aligned_model`), the span chart on it
(`span_model`, `chart`) and their config (`config`, without TensorFlow)."""
