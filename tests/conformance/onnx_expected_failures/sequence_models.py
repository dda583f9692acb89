"""Sequence-model tests (RNN/GRU/LSTM, Attention, RoPE, linear attention, FlexAttention) vinerun fails."""

EXPECTED_FAILURES: list[tuple[str, str]] = [
    (r"^test_attention_4d_causal_fp16_expanded_cpu$",
     "the function-body expansion computes every intermediate (MatMul, Softmax) in float16, 1 ulp (4.9e-4) "
     "away from the expected values, which exceeds rtol 1e-3; the fused Attention op passes"),
]
