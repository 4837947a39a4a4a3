export { buildScenario, type Scenario } from '../../src/fakes/simulator.js';
