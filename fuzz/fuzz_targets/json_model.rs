//! The JSON model of the contract: any bytes, read as each kind of input
//! the CLI takes, either refuse cleanly or convert to the component's types.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(request) = serde_json::from_str::<engram::json::WriteRequest>(text) {
        let wit: engram::io::WriteRequest = request.clone().into();
        let _ = engram::limits::record_size(&wit.record);
        // What was read writes back as JSON that reads again the same.
        let again = serde_json::to_string(&request).expect("a request serializes");
        let reread: engram::json::WriteRequest =
            serde_json::from_str(&again).expect("a serialized request reads again");
        assert_eq!(
            serde_json::to_string(&reread).unwrap(),
            again,
            "a round trip changes nothing"
        );
    }
    if let Ok(request) = serde_json::from_str::<engram::json::ReadRequest>(text) {
        let _: engram::io::ReadRequest = request.into();
    }
    if let Ok(plan) = serde_json::from_str::<engram::json::Plan>(text) {
        let _: engram::cycle::ExecutionPlan = plan.into();
    }
    let _ = serde_json::from_str::<engram::json::ExportLine>(text);
});
