//! A node tree's shape, read before its nodes: how many there are and how deep they go, with
//! nothing kept but a count. A hostile document of a million tiny nodes costs a scan here, not
//! a tree of a million [`crate::node::Node`]s, and the reading stops at the first node past a
//! limit.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;

use crate::Seg;

/// What is wrong with a tree's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeFault {
    /// More nodes than the limit.
    TooMany,
    /// A node nested deeper than the limit: the path of the first, from the tree's root.
    TooDeep(Vec<Seg>),
}

const TOO_MANY: &str = "\u{0}too many nodes";
const TOO_DEEP: &str = "\u{0}too deep";

/// Counts the nodes of the tree in `json` (a node and its `children`, recursively) and bounds
/// their depth, the root at 1. Anything that is not a tree of objects is left for the typed
/// reading to name: only the two limits are this check's.
pub fn check(json: &str, max_nodes: usize, max_depth: usize) -> Result<(), ShapeFault> {
    let count = Cell::new(0);
    let seed = NodeSeed { depth: 1, count: &count, max_nodes, max_depth };
    let mut track = serde_path_to_error::Track::new();
    let mut de = serde_json::Deserializer::from_str(json);
    match seed.deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track)) {
        Ok(()) => Ok(()),
        Err(e) if e.to_string().starts_with(TOO_MANY) => Err(ShapeFault::TooMany),
        Err(e) if e.to_string().starts_with(TOO_DEEP) => {
            Err(ShapeFault::TooDeep(track.path().iter().filter_map(crate::seg).collect()))
        }
        Err(_) => Ok(()),
    }
}

/// A visitor's methods for every scalar, each accepting it: what is not the expected shape is
/// the typed reading's to name, never this check's.
macro_rules! scalars_pass {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    };
}

#[derive(Clone, Copy)]
struct NodeSeed<'a> {
    depth: usize,
    count: &'a Cell<usize>,
    max_nodes: usize,
    max_depth: usize,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.count.set(self.count.get() + 1);
        if self.count.get() > self.max_nodes {
            return Err(D::Error::custom(TOO_MANY));
        }
        if self.depth > self.max_depth {
            return Err(D::Error::custom(TOO_DEEP));
        }
        d.deserialize_any(NodeVisitor(self))
    }
}

/// A node: only its `children` (and `components`) are looked into.
struct NodeVisitor<'a>(NodeSeed<'a>);

impl<'de> Visitor<'de> for NodeVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            // The root's `components` stand beside the screen: nodes as its children are.
            if key == "children" || key == "components" {
                map.next_value_seed(Children(NodeSeed { depth: self.0.depth + 1, ..self.0 }))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    // Not an object: the typed reading says so.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        IgnoredAny.visit_seq(seq).map(drop)
    }
    scalars_pass!();
}

/// A node's `children`: each a node one level deeper.
struct Children<'a>(NodeSeed<'a>);

impl<'de> DeserializeSeed<'de> for Children<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Children<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("children")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self.0)?.is_some() {}
        Ok(())
    }

    // Not an array: the typed reading says so.
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        IgnoredAny.visit_map(map).map(drop)
    }
    scalars_pass!();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        let mut s = r#"{"type":"FRAME"}"#.to_owned();
        for _ in 1..depth {
            s = format!(r#"{{"type":"FRAME","children":[{{"type":"TEXT"}},{s}]}}"#);
        }
        s
    }

    #[test]
    fn counts_and_depth_are_bounded_and_the_first_too_deep_node_is_named() {
        assert_eq!(check(&nested(40), 100, 40), Ok(()));
        let Err(ShapeFault::TooDeep(path)) = check(&nested(41), 100, 40) else { panic!("not too deep") };
        assert_eq!(crate::json_path("$", &path[..4]), "$.children[1].children[1]");
        assert_eq!(path.len(), 80, "two steps per level below the root");
        // 40 levels hold 79 nodes.
        assert_eq!(check(&nested(40), 79, 40), Ok(()));
        assert_eq!(check(&nested(40), 78, 40), Err(ShapeFault::TooMany));
        // The root's components count, and are as deep as its children.
        let beside = format!(r#"{{"type":"FRAME","components":[{},{{"type":"COMPONENT"}}]}}"#, nested(40));
        assert_eq!(check(&beside, 81, 41), Ok(()));
        assert_eq!(check(&beside, 80, 41), Err(ShapeFault::TooMany));
        let Err(ShapeFault::TooDeep(path)) = check(&beside, 100, 40) else { panic!("not too deep") };
        assert_eq!(crate::json_path("$", &path[..2]), "$.components[0]");
    }

    #[test]
    fn what_is_not_a_tree_of_objects_is_left_to_the_typed_reading() {
        for doc in
            [r#"{"children": 3}"#, r#"{"children": [1, "x", null, [2]]}"#, "[]", "7", r#"{"children": {"a": 1}}"#]
        {
            assert_eq!(check(doc, 10, 5), Ok(()), "{doc}");
        }
        assert_eq!(check("{", 10, 5), Ok(()), "a syntax error is the typed reading's to report");
    }
}
