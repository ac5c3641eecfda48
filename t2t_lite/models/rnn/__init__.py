"""The recurrent models of the seq2seq lecture, registered on the model seam (t2t_lite/models/contract.py).

- "rnn_seq2seq" (`t2t_lite.models.rnn.seq2seq`): Sutskever et al. 2014, no attention;
- "bahdanau" (`t2t_lite.models.rnn.bahdanau`): Bahdanau, Cho & Bengio 2015;
- "luong" (`t2t_lite.models.rnn.luong`): Luong, Pham & Manning 2015.

Their configs (`t2t_lite.models.rnn.config`) import no TensorFlow. Importing a model's module
registers it (the registry does on its first lookup of a model).
"""
