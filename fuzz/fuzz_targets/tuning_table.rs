//! The tuning-table loader (`convgrad::ops::tuned`) on arbitrary text: an
//! error naming what is wrong, or a table that writes back to JSON and
//! reads back as itself.
#![no_main]

use convgrad::ops::tuned::Table;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(table) = Table::from_json(text, "fuzz") else { return };
    for e in &table.entries {
        let _ = e.label();
    }
    let again = Table::from_json(&table.to_json(), "fuzz round trip").expect("a loaded table reloads");
    assert_eq!(again.entries.len(), table.entries.len());
});
