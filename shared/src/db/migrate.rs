//! The schema: `migrations/V*.sql`, embedded at build time and applied by refinery, which
//! orders them and records each applied version with its checksum.

mod embedded {
    refinery::embed_migrations!("../migrations");
}

/// Applies the embedded migrations (`migrations/V*.sql`) with refinery. Refinery takes care
/// of ordering and records each applied version with its checksum, refusing edited ones.
pub async fn migrate(client: &mut tokio_postgres::Client) -> Result<Vec<String>, refinery::Error> {
    let report = embedded::migrations::runner().run_async(client).await?;
    Ok(report.applied_migrations().iter().map(|m| m.to_string()).collect())
}
