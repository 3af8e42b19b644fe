//! Kernel entry points (stub).
