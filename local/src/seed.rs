//! Plain-SQL seeding of the tables the feature depends on (owned elsewhere in the product, so
//! SPEC section 2 lets tests and fixtures insert them directly): one organization with a
//! project, a member and a page import. Shared by the demo, the tests and the benchmarks.

/// What [`tenant`] created.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub org: i32,
    pub project: i32,
    pub sub: String,
    pub page_import: String,
}

/// An organization named `name` with one project, `sub` as its member, and a page import
/// `page_import` of status `page_status` ('0' processing, '1' completed, '2' failed).
pub async fn tenant(
    c: &tokio_postgres::Client,
    name: &str,
    sub: &str,
    page_import: &str,
    page_status: &str,
    capture_url: Option<&str>,
) -> Result<Tenant, tokio_postgres::Error> {
    let org: i32 = c.query_one("INSERT INTO organization (name) VALUES ($1) RETURNING id", &[&name]).await?.get(0);
    let project: i32 = c
        .query_one("INSERT INTO project (organization_id, name) VALUES ($1, $2) RETURNING id", &[&org, &name])
        .await?
        .get(0);
    c.execute("INSERT INTO organization_member (organization_id, subject) VALUES ($1, $2)", &[&org, &sub]).await?;
    c.execute(
        "INSERT INTO page_import (id, organization_id, project_id, status, capture_url) \
         VALUES ($1, $2, $3, $4::text::page_import_status, $5)",
        &[&page_import, &org, &project, &page_status, &capture_url],
    )
    .await?;
    Ok(Tenant { org, project, sub: sub.to_owned(), page_import: page_import.to_owned() })
}
