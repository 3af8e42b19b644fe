//! Implicit-GEMM pipeline (stub).
