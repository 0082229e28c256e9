//! The converter (which does not depend on the shared crate) and the result route's check
//! agree on the fixed list of warning codes.

#[test]
fn the_converter_emits_only_codes_the_result_route_accepts() {
    assert_eq!(code2des_convert::WARNING_CODES, shared::domain::artifact::WARNING_CODES);
}
