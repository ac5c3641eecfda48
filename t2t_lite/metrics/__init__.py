"""Evaluation metrics: corpus BLEU (sacreBLEU and tokenized multi-bleu)."""
