//! Matrix atoms (stub).
