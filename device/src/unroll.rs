//! [`unroll!`]: loops spelled out per literal index.

/// Expands `$body` once per literal index, with `$j` bound to it: loops over
/// per-thread arrays that must stay in registers on AMD (no scratch) whatever
/// LLVM's unroller decides.
macro_rules! unroll {
    ($j:ident in [$($i:literal),*] => $body:block) => {
        $( { let $j: usize = $i; $body } )*
    };
}
pub(crate) use unroll;
