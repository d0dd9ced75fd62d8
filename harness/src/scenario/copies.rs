//! Scaling a scenario's workload: the same operations and faults, copied side by side.

use crate::scenario::Scenario;

impl Scenario {
    /// The scenario with its workload `copies` times over: operation `charge` becomes `charge.1` …
    /// `charge.N`, each copy with its own faults and its own tenant (`acme.1` …), so that a
    /// revocation in one copy does not reach into another.
    pub fn with_copies(&self, copies: u32) -> Scenario {
        if copies <= 1 {
            return self.clone();
        }
        let mut scaled = self.clone();
        scaled.operations.clear();
        scaled.faults.clear();
        scaled.lookup_faults.clear();
        scaled.model_faults.clear();
        scaled.policy_faults.clear();
        // A consumer fault scoped to an operation or tenant follows each copy; one on a whole
        // destination stays one, as before.
        scaled.consumer_faults.retain(|c| c.operation.is_none() && c.tenant.is_none());
        for k in 1..=copies {
            for fault in self.consumer_faults.iter().filter(|c| c.operation.is_some() || c.tenant.is_some()) {
                let mut copy = fault.clone();
                copy.operation = fault.operation.as_ref().map(|o| format!("{o}.{k}"));
                copy.tenant = fault.tenant.as_ref().map(|t| format!("{t}.{k}"));
                scaled.consumer_faults.push(copy);
            }
            for op in &self.operations {
                let mut copy = op.clone();
                copy.id = format!("{}.{k}", op.id);
                copy.tenant = format!("{}.{k}", op.tenant);
                scaled.operations.push(copy);
            }
            for fault in &self.faults {
                let mut copy = fault.clone();
                copy.operation = format!("{}.{k}", fault.operation);
                scaled.faults.push(copy);
            }
            for fault in &self.lookup_faults {
                let mut copy = fault.clone();
                copy.operation = format!("{}.{k}", fault.operation);
                scaled.lookup_faults.push(copy);
            }
            for fault in &self.model_faults {
                let mut copy = fault.clone();
                copy.operation = format!("{}.{k}", fault.operation);
                scaled.model_faults.push(copy);
            }
            // A fault for any operation is copied too, so each copy's checks meet as many.
            for fault in &self.policy_faults {
                let mut copy = fault.clone();
                copy.operation = fault.operation.as_ref().map(|o| format!("{o}.{k}"));
                scaled.policy_faults.push(copy);
            }
        }
        scaled
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::fixtures::{OK, parse};

    #[test]
    fn copies_carry_their_own_lookup_and_policy_faults() {
        let text = format!(
            "{OK}action = \"fail\"\n[[lookup_fault]]\noperation = \"charge\"\ntimes = 1\naction = \"drop\"\n[[policy_fault]]\noperation = \"charge\"\ntimes = 1\naction = \"garbage\"\n[[policy_fault]]\naction = \"fail\"\ntimes = 1\n"
        );
        let copies = parse(&text).unwrap().with_copies(2);
        let lookups: Vec<&str> = copies.lookup_faults.iter().map(|l| l.operation.as_str()).collect();
        assert_eq!(lookups, ["charge.1", "charge.2"]);
        let policies: Vec<Option<&str>> = copies.policy_faults.iter().map(|p| p.operation.as_deref()).collect();
        assert_eq!(policies, [Some("charge.1"), None, Some("charge.2"), None]);
        assert_eq!(copies.faults[0].status, Some(503));
    }
}
