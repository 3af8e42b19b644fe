//! PTX modules: `.target` and each `.entry`'s `.param` list.

use super::{ArgMeta, KernelMeta};

/// What a PTX module declares.
#[derive(Clone, Debug, PartialEq)]
pub struct PtxModule {
    /// `.version`, e.g. `8.0` (empty if absent).
    pub version: String,
    /// `.target`'s first word, e.g. `sm_90` or `sm_90a` (empty if absent).
    pub target: String,
    /// Kernels (`.entry`), in file order.
    pub kernels: Vec<KernelMeta>,
}

fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut it = src.chars().peekable();
    while let Some(c) = it.next() {
        match (c, it.peek()) {
            ('/', Some('/')) => {
                for d in it.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                it.next();
                let mut prev = ' ';
                for d in it.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
                out.push(' ');
            }
            ('"', _) => {
                out.push(c);
                for d in it.by_ref() {
                    out.push(d);
                    if d == '"' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn type_bytes(tok: &str) -> Option<u64> {
    let t = tok.strip_prefix('.')?;
    // `split_at_checked`: a bare `.` or a multi-byte first char is no type, not a panic.
    let (kind, bits) = t.split_at_checked(1)?;
    if !matches!(kind, "u" | "s" | "b" | "f") {
        return None;
    }
    let bits: u64 = bits.parse().ok()?;
    matches!(bits, 8 | 16 | 32 | 64 | 128).then_some(bits / 8)
}

fn parse_param(decl: &str, index: usize) -> Result<ArgMeta, String> {
    let toks: Vec<&str> = decl.split_whitespace().collect();
    if toks.first() != Some(&".param") {
        return Err(format!("unexpected parameter declaration `{decl}`"));
    }
    let elem = toks
        .iter()
        .find_map(|t| type_bytes(t))
        .ok_or_else(|| format!("no type in parameter declaration `{decl}`"))?;
    let last = toks.last().copied().unwrap_or("");
    let (name, count) = match last.find('[') {
        Some(i) => {
            let n = last[i + 1..]
                .trim_end_matches(']')
                .parse::<u64>()
                .map_err(|_| format!("bad array size in `{decl}`"))?;
            (&last[..i], n)
        }
        None => (last, 1),
    };
    let is_ptr = toks.contains(&".ptr");
    let ty = toks
        .iter()
        .find(|t| type_bytes(t).is_some())
        .copied()
        .unwrap_or("");
    let kind = if count > 1 || last.contains('[') {
        format!("{ty}[{count}] (by value)")
    } else if is_ptr {
        format!("{ty} .ptr")
    } else {
        ty.to_string()
    };
    Ok(ArgMeta {
        name: Some(name.to_string()),
        offset: index as u64,
        size: elem * count,
        kind,
    })
}

/// Parses the kernels of a PTX module. `ArgMeta::offset` is the parameter's index
/// (PTX parameters have no byte offsets).
pub fn parse(ptx: &str) -> Result<PtxModule, String> {
    let src = strip_comments(ptx);
    let mut version = String::new();
    let mut target = String::new();
    for line in src.lines() {
        let mut t = line.split_whitespace();
        match t.next() {
            Some(".version") => version = t.next().unwrap_or("").to_string(),
            Some(".target") => target = t.next().unwrap_or("").trim_end_matches(',').to_string(),
            _ => {}
        }
    }
    let mut kernels = Vec::new();
    let bytes = src.as_bytes();
    let mut from = 0;
    while let Some(rel) = src[from..].find(".entry") {
        let at = from + rel;
        let end_kw = at + ".entry".len();
        from = end_kw;
        // Must be a whole word.
        let before_ok = at == 0 || bytes[at - 1].is_ascii_whitespace();
        let after_ok = bytes.get(end_kw).is_some_and(|b| b.is_ascii_whitespace());
        if !before_ok || !after_ok {
            continue;
        }
        let rest = &src[end_kw..];
        let name_start = rest.len() - rest.trim_start().len();
        let name_len = rest[name_start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.'))
            .unwrap_or(rest.len() - name_start);
        let name = rest[name_start..name_start + name_len].to_string();
        if name.is_empty() {
            return Err(format!("`.entry` without a name at byte {at}"));
        }
        let after_name = &rest[name_start + name_len..];
        let body = after_name
            .find('{')
            .ok_or_else(|| format!("`.entry {name}` has no body"))?;
        let header = &after_name[..body];
        let mut args = Vec::new();
        let mut directives = header;
        if let Some(open) = header.find('(') {
            // The last `)` after the `(`: a stray `)` before it is no list end.
            let close = header[open..]
                .rfind(')')
                .map(|c| open + c)
                .ok_or_else(|| format!("`.entry {name}`: unclosed parameter list"))?;
            let list = header[open + 1..close].trim();
            if !list.is_empty() {
                for (i, decl) in list.split(',').enumerate() {
                    args.push(
                        parse_param(decl.trim(), i).map_err(|e| format!("`.entry {name}`: {e}"))?,
                    );
                }
            }
            directives = &header[close + 1..];
        }
        let dims = |key: &str| -> Option<u64> {
            let i = directives.find(key)?;
            let nums: Vec<u64> = directives[i + key.len()..]
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map_while(|s| s.parse().ok())
                .collect();
            (!nums.is_empty()).then(|| nums.iter().product())
        };
        kernels.push(KernelMeta {
            symbol: None,
            kernarg_size: Some(args.iter().map(|a| a.size).sum()),
            static_lds_bytes: None,
            private_bytes: None,
            max_threads: dims(".maxntid"),
            required_threads: dims(".reqntid"),
            wave_size: Some(32),
            sgprs: None,
            vgprs: None,
            spills: 0,
            name,
            args,
        });
        from = end_kw + name_start + name_len + body;
    }
    Ok(PtxModule {
        version,
        target,
        kernels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
//
// Generated by LLVM NVPTX Back-End
//
.version 8.0
.target sm_90
.address_size 64

.extern .shared .align 16 .b8 __dyn_lds[];
/* a block comment with .entry fake( .param .u32 x ) { } */
.visible .entry smoke_mma(
	.param .u64 .ptr .global .align 8 smoke_mma_param_0
)
.maxntid 32, 1, 1
{
	ret;
}
.visible .entry two(
	.param .u64 two_param_0,
	.param .align 8 .b8 two_param_1[24]
)
{
	ret;
}
.entry none()
{
	ret;
}
"#;

    #[test]
    fn parses_entries() {
        let m = parse(PTX).unwrap();
        assert_eq!(m.target, "sm_90");
        assert_eq!(m.version, "8.0");
        let names: Vec<_> = m.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["smoke_mma", "two", "none"]);
        assert_eq!(m.kernels[0].args.len(), 1);
        assert_eq!(m.kernels[0].args[0].size, 8);
        assert_eq!(m.kernels[0].max_threads, Some(32));
        assert_eq!(m.kernels[1].args[1].size, 24);
        assert!(m.kernels[2].args.is_empty());
    }

    /// Inputs the fuzzer found (stop 53's CI): errors or kernels, never a panic.
    #[test]
    fn malformed_declarations_are_errors() {
        assert_eq!(type_bytes("."), None);
        assert_eq!(type_bytes(".\u{e9}32"), None);
        assert!(parse(".entry a ( .param . x ) {").is_err());
        assert!(parse(".entry a ( .param .\u{e9} x ) {").is_err());
        assert!(parse(".entry a ) ( {").is_err());
        assert!(parse(".entry a ) ( .param .u32 x ) {").is_ok());
    }
}
