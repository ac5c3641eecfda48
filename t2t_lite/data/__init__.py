"""Data: batching, TFRecord shards and their manifest, vocabularies, word classes, datagen."""
