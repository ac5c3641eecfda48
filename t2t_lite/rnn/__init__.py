"""The recurrent models of the seq2seq lecture, registered on the model seam (t2t_lite/models/contract.py).

- "rnn_seq2seq" (`t2t_lite.rnn.seq2seq`): Sutskever et al. 2014, no attention;
- "bahdanau" (`t2t_lite.rnn.bahdanau`): Bahdanau, Cho & Bengio 2015;
- "luong" (`t2t_lite.rnn.luong`): Luong, Pham & Manning 2015.

Importing the package registers all three (the registry does on its first lookup).
"""

from t2t_lite.rnn import bahdanau, luong, seq2seq  # noqa: F401  (register the models)
