//! `cargo xtask list-instances`: the kernel instance table.

use crate::util;
use convgrad_types::instance::{Family, INSTANCES};

/// Prints the table.
pub fn run() {
    let mut rows = vec![
        [
            "kernel",
            "families",
            "op",
            "types",
            "tile bm x bn x bk",
            "waves",
            "atom",
            "threads",
            "LDS B",
            "constraints",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for i in INSTANCES.iter() {
        let fams: Vec<&str> = i.families.iter().map(|f| f.cfg()).collect();
        // Threads per family, collapsed when equal.
        let threads: Vec<(Family, u32)> = i.families.iter().map(|&f| (f, i.threads(f))).collect();
        let threads = if threads.iter().all(|t| t.1 == threads[0].1) {
            threads[0].1.to_string()
        } else {
            threads
                .iter()
                .map(|(f, t)| format!("{}:{t}", f.cfg()))
                .collect::<Vec<_>>()
                .join(" ")
        };
        rows.push(vec![
            i.name.to_string(),
            fams.join(","),
            format!("{:?}", i.op),
            i.types.name().to_string(),
            format!("{}x{}x{}", i.tile.bm, i.tile.bn, i.tile.bk),
            format!("{}x{}", i.tile.waves_m, i.tile.waves_n),
            format!("{:?}", i.atom),
            threads,
            i.lds_bytes().to_string(),
            convgrad::ops::select::needs(i.op).to_string(),
        ]);
    }
    print!("{}", util::table(&rows));
    println!("{} instances", INSTANCES.len());
}
