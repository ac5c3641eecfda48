"""What a model is to the rest of t2t_lite: the contract (`contract`) and the losses.

Every class registered with `t2t_lite.registry.register_model` implements
`contract.Seq2SeqModel`, usually by subclassing `contract.ModelBase`, which
gives the optional members their defaults.
"""
