"""Transformer and audio models of ``compare.py``, built from PyPI libraries' code with random weights.

``TEXT_AUDIO_MODELS`` maps a name to a :class:`model_zoo.ModelSpec`. Every model is built from a config (never
downloaded: no ``from_pretrained``, no tokenizer; ``torch.manual_seed(0)``), exported by ``torch.onnx.export``
(TorchScript exporter, opset 17) with the dynamic axes a user would give, and cached in the build folder; the
inputs are fixed (``np.random.default_rng(1)``).

- ``distilbert-hf``: transformers' DistilBertModel (6 layers, dim 384, 12 heads, FFN 1536), 128 tokens, the last
  28 masked; dynamic batch and sequence.
- ``roberta-hf``: transformers' RobertaModel (6 layers, hidden 384, 12 heads, FFN 1536), same feed shape; its
  position ids are computed in the graph from the input ids (padding id 1: Equal/Not, CumSum).
- ``gpt2-kv-hf``: transformers' GPT2LMHeadModel (4 layers, width 256, 4 heads, vocabulary 8000) as one decoding
  step with a KV cache: the present keys/values (and the grown attention mask) are fed back, so the cache grows by
  one per call from a 32-token past; ``cycle=64`` restarts from the initial feed after 64 steps.
- ``whisper-enc-hf``: transformers' WhisperEncoder (d_model 384, 4 layers, 6 heads) on 80 x 3000 log-mel frames:
  a Conv1d stem (stride 2) then a transformer over 1500 positions.
- ``wav2vec2-hf``: transformers' Wav2Vec2Model (hidden 384, 4 layers, 6 heads, FFN 1536) with its default
  7-layer convolutional feature extractor (GroupNorm) and grouped positional convolution, on 1 s of 16 kHz audio;
  dynamic batch and samples.
- ``vit-hf``: transformers' ViTModel (hidden 384, 6 layers, 6 heads, FFN 1536), a 224 x 224 image in 16 x 16
  patches.
- ``kws-gru``: a keyword spotter written here from torch.nn building blocks: STFT, log magnitude, a 2-layer GRU
  over the frames, a linear classifier (ONNX STFT and GRU ops), on 1 s of 16 kHz audio.
- ``lstm-step``: a streaming speech-style step written here from torch.nn building blocks: one 80-dim frame per
  call through a Linear and a 2-layer LSTM (ONNX LSTM, sequence length 1), the h/c state fed back.

>>> sorted(TEXT_AUDIO_MODELS)[:3]
['distilbert-hf', 'gpt2-kv-hf', 'kws-gru']
>>> TEXT_AUDIO_MODELS["gpt2-kv-hf"].cycle, len(TEXT_AUDIO_MODELS["gpt2-kv-hf"].feedback)
(64, 9)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
from zoo_spec import ModelSpec

OPSET = 17
GPT2_LAYERS, GPT2_HEADS, GPT2_WIDTH, GPT2_VOCAB = 4, 4, 256, 8000
GPT2_PAST = 32  # tokens in the KV cache of the first step
GPT2_CYCLE = 64  # steps before the latency loop restarts from the first step's feed (the cache stays bounded)
LSTM_LAYERS, LSTM_HIDDEN, LSTM_FRAME = 2, 256, 80


def _rng() -> np.random.Generator:
    return np.random.default_rng(1)


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise RuntimeError("the text/audio zoo models are built with the PyPI package 'torch'") from exc
    return torch


def _transformers() -> Any:
    try:
        from zoo_vision import importable_torchvision

        importable_torchvision()  # transformers imports torchvision where it is installed
        import transformers
    except ImportError as exc:
        raise RuntimeError("install the PyPI package 'transformers' (the model is built from its config with "
                           "random weights)") from exc
    return transformers


def _exported(file: str, make: Callable[[], tuple[Any, tuple[Any, ...]]], inputs: list[str], outputs: list[str],
              axes: dict[str, dict[int, str]]) -> Callable[[str], str]:
    """A builder: ``make()`` (called after ``torch.manual_seed(0)``) gives the module and the example arguments,
    exported to ``folder/file`` once (the file is reused when present)."""
    def build(folder: str) -> str:
        path = os.path.join(folder, file)
        if os.path.exists(path):
            return path
        torch = _torch()
        torch.manual_seed(0)
        module, args = make()
        os.makedirs(folder, exist_ok=True)
        with torch.no_grad():
            torch.onnx.export(module.eval(), args, path, input_names=inputs, output_names=outputs,
                              dynamic_axes=axes, opset_version=OPSET, dynamo=False)
        return path
    return build


def _hidden_state(net: Any, *names: str) -> Any:
    """A module that calls ``net`` with the named tensor arguments and returns ``last_hidden_state``."""
    torch = _torch()

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, *args: Any) -> Any:
            return self.net(**dict(zip(names, args, strict=True))).last_hidden_state
    return LastHiddenState()


# ---------------------------------------------------------------- text encoders (tokens, masked padding)

TOKEN_AXES = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
              "last_hidden_state": {0: "batch", 1: "sequence"}}


def _distilbert() -> tuple[Any, tuple[Any, ...]]:
    t = _transformers()
    config = t.DistilBertConfig(n_layers=6, dim=384, n_heads=12, hidden_dim=1536)
    net = t.DistilBertModel(config)
    return _hidden_state(net, "input_ids", "attention_mask"), _example_tokens()


def _roberta() -> tuple[Any, tuple[Any, ...]]:
    t = _transformers()
    config = t.RobertaConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
    net = t.RobertaModel(config, add_pooling_layer=False)
    return _hidden_state(net, "input_ids", "attention_mask"), _example_tokens(pad=1)


def _example_tokens(pad: int = 0) -> tuple[Any, Any]:
    torch = _torch()
    feed = text_inputs(pad)()
    return torch.from_numpy(feed["input_ids"]), torch.from_numpy(feed["attention_mask"])


def text_inputs(pad: int = 0, vocab: int = 30522) -> Callable[[], dict[str, np.ndarray]]:
    """128 tokens (ids 3 ... vocab - 1; the first is 0, a BOS for RoBERTa), the last 28 the padding id ``pad`` and
    masked.

    >>> feed = text_inputs(pad=1)()
    >>> feed["input_ids"][0, [0, 100, 127]].tolist(), int(feed["attention_mask"].sum())
    ([0, 1, 1], 100)
    """
    def inputs() -> dict[str, np.ndarray]:
        ids = _rng().integers(3, vocab, (1, 128)).astype(np.int64)
        ids[0, 0], ids[0, 100:] = 0, pad
        mask = np.ones((1, 128), np.int64)
        mask[0, 100:] = 0
        return {"input_ids": ids, "attention_mask": mask}
    return inputs


# ---------------------------------------------------------------- GPT-2, one decoding step with a KV cache

def gpt2_kv_names() -> tuple[list[str], list[str]]:
    """The step's input and output names: ``input_ids``, ``attention_mask``, ``past_key_values.{i}.key`` /
    ``.value``; ``logits``, ``present.{i}.key`` / ``.value``, ``next_attention_mask``."""
    kv = [f"{i}.{kind}" for i in range(GPT2_LAYERS) for kind in ("key", "value")]
    return (["input_ids", "attention_mask"] + [f"past_key_values.{n}" for n in kv],
            ["logits"] + [f"present.{n}" for n in kv] + ["next_attention_mask"])


def _gpt2_kv() -> tuple[Any, tuple[Any, ...]]:
    """GPT2LMHeadModel wrapped so that the cache is flat tensors in and out (transformers 5 takes a
    ``DynamicCache``; it is rebuilt from the past tensors inside the traced forward).

    The attention mask [batch, past + 1] must grow with the cache, and ``ModelSpec.feedback`` only copies an output
    into an input. Exporting without a mask would hide the masked-attention pattern every real decoder export has
    (left padding of a batch), so the mask stays an input and the step also returns ``next_attention_mask``: the
    mask with a column of ones appended (one Concat), fed back like the keys/values. The token is not fed back (no
    argmax in the graph): every step decodes the same id, which changes nothing in the work done. Position ids come
    from the past length (transformers' ``cache_position``), computed in the graph from the past's shape."""
    torch, t = _torch(), _transformers()
    config = t.GPT2Config(n_layer=GPT2_LAYERS, n_embd=GPT2_WIDTH, n_head=GPT2_HEADS, vocab_size=GPT2_VOCAB)
    net = t.GPT2LMHeadModel(config)

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids: Any, attention_mask: Any, *past: Any) -> tuple[Any, ...]:
            cache = t.DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(GPT2_LAYERS)])
            out = self.net(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
            present = [x for layer in out.past_key_values.layers for x in (layer.keys, layer.values)]
            grown = torch.cat([attention_mask, torch.ones_like(attention_mask[:, :1])], dim=1)
            return (out.logits, *present, grown)

    feed = gpt2_kv_inputs()
    names = gpt2_kv_names()[0]
    return Step(), tuple(torch.from_numpy(feed[n]) for n in names)


def _gpt2_axes() -> dict[str, dict[int, str]]:
    inputs, outputs = gpt2_kv_names()
    axes = {"input_ids": {0: "batch"}, "attention_mask": {0: "batch", 1: "past_sequence + 1"},
            "logits": {0: "batch"}, "next_attention_mask": {0: "batch", 1: "past_sequence + 2"}}
    axes.update({n: {0: "batch", 2: "past_sequence"} for n in inputs[2:]})
    axes.update({n: {0: "batch", 2: "past_sequence + 1"} for n in outputs[1:-1]})
    return axes


def gpt2_kv_inputs() -> dict[str, np.ndarray]:
    """The first step: one token, a 32-token past of random keys/values (standard normal), the mask all ones over
    past + 1."""
    r = _rng()
    feed = {"input_ids": r.integers(0, GPT2_VOCAB, (1, 1)).astype(np.int64),
            "attention_mask": np.ones((1, GPT2_PAST + 1), np.int64)}
    for name in gpt2_kv_names()[0][2:]:
        feed[name] = r.standard_normal((1, GPT2_HEADS, GPT2_PAST, GPT2_WIDTH // GPT2_HEADS)).astype(np.float32)
    return feed


def gpt2_kv_feedback() -> dict[int, str]:
    """Output index -> input: each present key/value into its past, ``next_attention_mask`` into the mask."""
    inputs, outputs = gpt2_kv_names()
    feedback = {i: name for i, name in enumerate(inputs[2:], start=1)}
    feedback[len(outputs) - 1] = "attention_mask"
    return feedback


# ---------------------------------------------------------------- speech and vision encoders

def _whisper_encoder() -> tuple[Any, tuple[Any, ...]]:
    t = _transformers()
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = t.WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
                             decoder_layers=4, decoder_attention_heads=6, decoder_ffn_dim=1536, num_mel_bins=80,
                             max_source_positions=1500)
    net = WhisperEncoder(config)
    return _hidden_state(net, "input_features"), (_torch().from_numpy(mel_inputs()["input_features"]),)


def mel_inputs() -> dict[str, np.ndarray]:
    """30 s of 80 log-mel bins (3000 frames), values about as Whisper's feature extractor scales them (-1 ... 1)."""
    return {"input_features": np.tanh(0.5 * _rng().standard_normal((1, 80, 3000))).astype(np.float32)}


def _wav2vec2() -> tuple[Any, tuple[Any, ...]]:
    t = _transformers()
    config = t.Wav2Vec2Config(hidden_size=384, num_hidden_layers=4, num_attention_heads=6, intermediate_size=1536)
    net = t.Wav2Vec2Model(config)
    return _hidden_state(net, "input_values"), (_torch().from_numpy(audio_inputs("input_values")()["input_values"]),)


def audio_inputs(name: str, samples: int = 16000) -> Callable[[], dict[str, np.ndarray]]:
    """``samples`` of 16 kHz audio [1, samples] (a 180 Hz tone with harmonics and noise), zero mean and unit
    variance as wav2vec2's feature extractor normalizes it."""
    def inputs() -> dict[str, np.ndarray]:
        t = np.arange(samples) / 16000
        audio = np.sin(2 * np.pi * 180 * t) + 0.3 * np.sin(2 * np.pi * 540 * t) + 0.2 * _rng().standard_normal(samples)
        audio = (audio - audio.mean()) / audio.std()
        return {name: audio[None].astype(np.float32)}
    return inputs


def _vit() -> tuple[Any, tuple[Any, ...]]:
    t = _transformers()
    config = t.ViTConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=6, intermediate_size=1536,
                         image_size=224, patch_size=16)
    net = t.ViTModel(config, add_pooling_layer=False)
    return _hidden_state(net, "pixel_values"), (_torch().from_numpy(pixel_inputs()["pixel_values"]),)


def pixel_inputs() -> dict[str, np.ndarray]:
    return {"pixel_values": _rng().standard_normal((1, 3, 224, 224)).astype(np.float32)}


# ---------------------------------------------------------------- recurrent audio models from torch.nn

def _kws_gru() -> tuple[Any, tuple[Any, ...]]:
    """STFT (n_fft 512, 25 ms Hann window, 10 ms hop, centered: a reflect Pad) -> log magnitude [1, 101, 257] ->
    2-layer GRU (hidden 128) -> the last frame -> Linear to 12 keywords."""
    torch = _torch()

    class KeywordSpotter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("window", torch.hann_window(400))
            self.gru = torch.nn.GRU(257, 128, num_layers=2, batch_first=True)
            self.classifier = torch.nn.Linear(128, 12)

        def forward(self, audio: Any) -> Any:
            spec = torch.stft(audio, n_fft=512, hop_length=160, win_length=400, window=self.window,
                              return_complex=False)  # [batch, 257, frames, 2]: ONNX's STFT has no complex type
            magnitude = torch.sqrt(spec.pow(2).sum(-1) + 1e-9)
            frames = torch.log(magnitude + 1e-6).transpose(1, 2)  # [batch, frames, 257]
            out, _ = self.gru(frames)
            return self.classifier(out[:, -1])

    return KeywordSpotter(), (torch.from_numpy(audio_inputs("audio")()["audio"]),)


def _lstm_step() -> tuple[Any, tuple[Any, ...]]:
    torch = _torch()

    class StreamingStep(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(LSTM_FRAME, LSTM_HIDDEN)
            self.lstm = torch.nn.LSTM(LSTM_HIDDEN, LSTM_HIDDEN, num_layers=LSTM_LAYERS, batch_first=True)

        def forward(self, frame: Any, h: Any, c: Any) -> tuple[Any, Any, Any]:
            out, (h, c) = self.lstm(torch.relu(self.proj(frame)), (h, c))
            return out, h, c

    feed = lstm_inputs()
    return StreamingStep(), tuple(torch.from_numpy(feed[n]) for n in ("frame", "h", "c"))


def lstm_inputs() -> dict[str, np.ndarray]:
    """One 80-dim frame [1, 1, 80] and a zero h/c state [2, 1, 256]."""
    state = np.zeros((LSTM_LAYERS, 1, LSTM_HIDDEN), np.float32)
    return {"frame": _rng().standard_normal((1, 1, LSTM_FRAME)).astype(np.float32), "h": state, "c": state.copy()}


TEXT_AUDIO_MODELS: dict[str, ModelSpec] = {
    # DistilBERT encoder: attention with a padding mask (transformers' default SDPA export), no token types
    "distilbert-hf": ModelSpec("distilbert-hf", _exported("distilbert_hf.onnx", _distilbert,
                                                          ["input_ids", "attention_mask"], ["last_hidden_state"],
                                                          TOKEN_AXES), text_inputs()),
    # RoBERTa encoder: as BERT, plus position ids computed in the graph from the ids (CumSum over a padding mask)
    "roberta-hf": ModelSpec("roberta-hf", _exported("roberta_hf.onnx", _roberta, ["input_ids", "attention_mask"],
                                                    ["last_hidden_state"], TOKEN_AXES),
                            text_inputs(pad=1, vocab=50265)),
    # GPT-2 decoding step: KV-cache Concat on a dynamic past axis, causal mask from a growing attention mask,
    # 9 outputs fed back per call, the cache reset every 64 steps
    "gpt2-kv-hf": ModelSpec("gpt2-kv-hf", _exported("gpt2_kv_hf.onnx", _gpt2_kv, *gpt2_kv_names(), _gpt2_axes()),
                            gpt2_kv_inputs, feedback=gpt2_kv_feedback(), cycle=GPT2_CYCLE),
    # Whisper encoder: Conv1d stem over 3000 mel frames, GELU, transformer over 1500 positions (long sequence)
    "whisper-enc-hf": ModelSpec("whisper-enc-hf", _exported("whisper_enc_hf.onnx", _whisper_encoder,
                                                            ["input_features"], ["last_hidden_state"],
                                                            {"input_features": {0: "batch"},
                                                             "last_hidden_state": {0: "batch"}}), mel_inputs),
    # wav2vec2: 7 strided Conv1d on raw audio (GroupNorm on the first), a grouped positional Conv1d, an encoder
    "wav2vec2-hf": ModelSpec("wav2vec2-hf", _exported("wav2vec2_hf.onnx", _wav2vec2, ["input_values"],
                                                      ["last_hidden_state"],
                                                      {"input_values": {0: "batch", 1: "samples"},
                                                       "last_hidden_state": {0: "batch", 1: "frames"}}),
                             audio_inputs("input_values")),
    # ViT: a 16x16/16 patch Conv, a class token Concat, an encoder over 197 positions
    "vit-hf": ModelSpec("vit-hf", _exported("vit_hf.onnx", _vit, ["pixel_values"], ["last_hidden_state"],
                                            {"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"}}),
                        pixel_inputs),
    # keyword spotter (written here from torch.nn): ONNX STFT, log magnitude, two GRU ops over 101 frames
    "kws-gru": ModelSpec("kws-gru", _exported("kws_gru.onnx", _kws_gru, ["audio"], ["logits"],
                                              {"audio": {0: "batch", 1: "samples"}, "logits": {0: "batch"}}),
                         audio_inputs("audio")),
    # streaming step (written here from torch.nn): Linear + 2-layer ONNX LSTM of sequence length 1, h/c fed back;
    # no bf16: the state carried from call to call would compound bf16 rounding, and a step is overhead-bound
    "lstm-step": ModelSpec("lstm-step", _exported("lstm_step.onnx", _lstm_step, ["frame", "h", "c"],
                                                  ["output", "h_out", "c_out"],
                                                  {"frame": {0: "batch"}, "h": {1: "batch"}, "c": {1: "batch"},
                                                   "output": {0: "batch"}, "h_out": {1: "batch"},
                                                   "c_out": {1: "batch"}}),
                           lstm_inputs, feedback={1: "h", 2: "c"}, bf16=False),
}
