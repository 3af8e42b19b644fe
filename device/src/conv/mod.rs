//! Convolution ops as GEMM mappings (stub).
