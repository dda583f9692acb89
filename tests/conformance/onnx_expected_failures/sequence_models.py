"""Sequence-model tests (RNN/GRU/LSTM, Attention, RoPE, linear attention, FlexAttention) vinerun fails."""

EXPECTED_FAILURES: list[tuple[str, str]] = [
    (r"^test_attention_4d_causal_fp16_expanded_cpu$",
     "the expected output rounds every step of the f16 Softmax (exp, sum, divide) to f16; vinerun computes f16 "
     "Softmax in f32 and rounds once (more accurate), 1-2 f16 ulps away on 2 of 192 values, beyond rtol 1e-3; "
     "the fused Attention op passes"),
]
