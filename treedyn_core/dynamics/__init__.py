"""The equations of motion: joints, the articulated-body passes, the seed model, wind and drag, linearisation, damping, balance and prestress, the divergence guard."""
