//! Who asks, and about what: the caller's scope and a job in it. Built at the HTTP edge from a
//! request (`crate::http::caller`), carried as newtypes into the statements that bind them.

use crate::domain::ids::{Code2desId, OrganizationId, ProjectId, Subject};

/// Who is asking, and in which organization and project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub organization_id: OrganizationId,
    pub project_id: ProjectId,
    pub subject: Subject,
}

impl Scope {
    /// `/organizations/{o}/projects/{p}/code2des/{id}`: the job's URL path, for `Location`.
    pub fn job_path(&self, id: Code2desId) -> String {
        format!("/organizations/{}/projects/{}/code2des/{id}", self.organization_id, self.project_id)
    }
}

/// A job as a route names it: the caller's scope and `{code2desId}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRef {
    pub scope: Scope,
    pub id: Code2desId,
}

impl JobRef {
    /// The job's URL path, for `Location`.
    pub fn location(&self) -> String {
        self.scope.job_path(self.id)
    }
}
