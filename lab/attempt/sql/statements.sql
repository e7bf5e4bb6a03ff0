-- The statements the application issues, one per name.

-- name: claim
UPDATE attempt SET status='RUNNING' WHERE id=300 AND status='PENDING';

-- name: cancel
UPDATE attempt SET status='CANCELLED' WHERE run_id=3 AND status IN ('PENDING','RUNNING');

-- name: list-run
SELECT id, status FROM attempt WHERE run_id=3;
