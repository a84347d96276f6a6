// A global setup whose end-of-run check reports one problem: the closing line must count it as failed.
import { registerRunCheck } from '../run-checks.ts';

export default function setup(): void {
  registerRunCheck(() => ['a write was refused (fixture)']);
}
