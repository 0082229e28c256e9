//! The benchmarks' PostgreSQL: a private cluster (code2des-testkit's) on a free loopback port,
//! never the machine's own (other developers' tests run there), with `pg_stat_statements`
//! loaded and tracking nested statements too (the round-trip count reads it), room for the
//! benchmarks' connections, and no fsync (the data is thrown away with the cluster).

use code2des_testkit::cluster::Cluster;

pub use code2des_testkit::cluster::free_port;

pub fn cluster() -> Result<Cluster, String> {
    Cluster::init()?.start(&[
        ("max_connections", "200"),
        ("fsync", "off"),
        ("shared_preload_libraries", "pg_stat_statements"),
        ("pg_stat_statements.track", "all"),
    ])
}
