//! The converter (which does not depend on the shared crate) and the result route's check
//! agree on the fixed list of warning codes and on how many warnings an artifact may hold.

#[test]
fn the_converter_emits_only_codes_the_result_route_accepts() {
    assert_eq!(code2des_convert::WARNING_CODES, shared::domain::artifact::WARNING_CODES);
}

/// The converter stops at MAX_WARNINGS; one more and the route's check would refuse the artifact.
#[test]
fn the_converters_warning_cap_is_the_artifacts_limit() {
    assert_eq!(code2des_convert::MAX_WARNINGS, shared::domain::artifact::Limits::default().max_warnings);
}
