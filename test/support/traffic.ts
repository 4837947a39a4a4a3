export { buildScenario, type Scenario } from '../../testkit/simulator.js';
