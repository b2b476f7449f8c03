-- The mode record keeps where plan mode was entered from and where it was left for, so a plan
-- approved after a cold restore still returns to the right mode.
ALTER TABLE sessions ADD COLUMN pre_plan_mode TEXT;
ALTER TABLE sessions ADD COLUMN plan_execution_mode TEXT;
