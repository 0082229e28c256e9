//! An anonymous PostgreSQL record (type `record`) read from its binary form: what
//! `SELECT code2des_read_job(...)` answers (migration V5). tokio-postgres decodes a composite
//! only when it knows the type by name, and learning an unknown type costs a named prepared
//! statement, which pins the session on RDS Proxy; `record` is built in, and its binary form
//! (PostgreSQL's `record_send`) carries each field's type OID:
//!
//! ```text
//! int4 field count, then per field: oid type, int4 length (-1: NULL), length bytes
//! ```
//!
//! Fields are read by position with the same `FromSql` impls as a row's columns, each checked
//! against the OID the server sent, so a field of the wrong type is an error, never a
//! misread. Malformed input (truncated, a negative count) is an error too: nothing here panics.

use std::error::Error;

use tokio_postgres::types::{FromSql, Type};

pub type BoxError = Box<dyn Error + Sync + Send>;

/// One record's fields, borrowed from the row that holds it.
#[derive(Debug)]
pub struct Record<'a> {
    fields: Vec<(u32, Option<&'a [u8]>)>,
}

fn take<const N: usize>(raw: &mut &[u8]) -> Result<[u8; N], BoxError> {
    let (head, rest) = raw.split_first_chunk::<N>().ok_or("a record ends early")?;
    *raw = rest;
    Ok(*head)
}

impl<'a> Record<'a> {
    /// The number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Field `i` (from 0) as `T`: an error if there is no such field, or if `T` cannot be read
    /// from the field's type (NULL needs an `Option`).
    pub fn get<T: FromSql<'a>>(&self, i: usize) -> Result<T, BoxError> {
        let (oid, value) = *self.fields.get(i).ok_or_else(|| format!("the record has no field {i}"))?;
        let ty =
            Type::from_oid(oid).ok_or_else(|| format!("field {i} has a type this service does not know ({oid})"))?;
        if !T::accepts(&ty) {
            return Err(format!("field {i} is {ty}, which {} cannot hold", std::any::type_name::<T>()).into());
        }
        T::from_sql_nullable(&ty, value).map_err(|e| format!("field {i} ({ty}): {e}").into())
    }
}

impl<'a> FromSql<'a> for Record<'a> {
    fn from_sql(_: &Type, mut raw: &'a [u8]) -> Result<Self, BoxError> {
        let count = i32::from_be_bytes(take::<4>(&mut raw)?);
        let count = usize::try_from(count).map_err(|_| "a record with a negative field count")?;
        // Each field takes at least 8 bytes: a count larger than the bytes allow is malformed,
        // and must not size an allocation.
        if count > raw.len() / 8 {
            return Err("a record with more fields than bytes".into());
        }
        let mut fields = Vec::with_capacity(count);
        for _ in 0..count {
            let oid = u32::from_be_bytes(take::<4>(&mut raw)?);
            let len = i32::from_be_bytes(take::<4>(&mut raw)?);
            let value = match usize::try_from(len) {
                Err(_) if len == -1 => None,
                Err(_) => return Err("a record field with a negative length".into()),
                Ok(n) => {
                    let (value, rest) = raw.split_at_checked(n).ok_or("a record ends early")?;
                    raw = rest;
                    Some(value)
                }
            };
            fields.push((oid, value));
        }
        if !raw.is_empty() {
            return Err("a record with bytes after its last field".into());
        }
        Ok(Self { fields })
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::RECORD
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(fields: &[(u32, Option<&[u8]>)]) -> Vec<u8> {
        let mut out = (fields.len() as i32).to_be_bytes().to_vec();
        for (oid, v) in fields {
            out.extend_from_slice(&oid.to_be_bytes());
            match v {
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    out.extend_from_slice(b);
                }
            }
        }
        out
    }

    #[test]
    fn reads_fields_by_position_checked_against_their_type() {
        let raw = encode(&[
            (Type::VARCHAR.oid(), Some(b"job")),
            (Type::INT4.oid(), Some(&7i32.to_be_bytes())),
            (Type::TEXT.oid(), None),
        ]);
        let r = Record::from_sql(&Type::RECORD, &raw).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r.get::<String>(0).unwrap(), "job");
        assert_eq!(r.get::<i32>(1).unwrap(), 7);
        assert_eq!(r.get::<Option<String>>(2).unwrap(), None);
        assert!(r.get::<String>(2).is_err(), "NULL needs an Option");
        assert!(r.get::<i32>(0).is_err(), "a varchar is not an int4");
        assert!(r.get::<i64>(1).is_err(), "an int4 is not read as an int8");
        assert!(r.get::<String>(3).is_err(), "no such field");
        let unknown = encode(&[(999_999, Some(b"x"))]);
        assert!(Record::from_sql(&Type::RECORD, &unknown).unwrap().get::<String>(0).is_err());
    }

    #[test]
    fn malformed_records_are_errors_not_panics() {
        let good = encode(&[(Type::VARCHAR.oid(), Some(b"abc")), (Type::INT4.oid(), None)]);
        for cut in 0..good.len() {
            assert!(Record::from_sql(&Type::RECORD, &good[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(Record::from_sql(&Type::RECORD, &trailing).is_err());
        assert!(Record::from_sql(&Type::RECORD, &(-1i32).to_be_bytes()).is_err());
        assert!(Record::from_sql(&Type::RECORD, &i32::MAX.to_be_bytes()).is_err());
        let mut negative = 1i32.to_be_bytes().to_vec();
        negative.extend_from_slice(&Type::TEXT.oid().to_be_bytes());
        negative.extend_from_slice(&(-2i32).to_be_bytes());
        assert!(Record::from_sql(&Type::RECORD, &negative).is_err());
        assert!(Record::from_sql(&Type::RECORD, &0i32.to_be_bytes()).unwrap().is_empty());
        assert!(Record::accepts(&Type::RECORD) && !Record::accepts(&Type::TEXT));
    }
}
